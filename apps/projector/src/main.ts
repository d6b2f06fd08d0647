// The projector process: `node dist/apps/projector/src/main.js`, configured by the
// environment (libs/config: COMMON and PROJECTOR settings).
import { stopTracing } from './tracing';
import { loadConfig, settingsOrExit } from '@baton/config';
import { runMain, stopOnSignals } from '@baton/health';
import { PROJECTOR_SETTINGS, projectorOptions, startProjector } from '@baton/projector';

runMain('projector', async () => {
  const config = settingsOrExit(() => loadConfig(PROJECTOR_SETTINGS));
  const options = projectorOptions(config);
  const projector = await startProjector(options);
  // Stopping releases the leases first, so other instances take the shards now, not at expiry.
  // The stop bounds its own waits at the shutdown period; the margin lets it log why first.
  stopOnSignals('projector', () => projector.stop(), stopTracing, options.periods.shutdown + 1_000);
});
