import { dirname, join } from 'node:path';
import { compiledPath } from '@baton/config';

export interface ReplayCommandOptions {
  pace?: number;
  crashAfterFrames?: number;
  hangOnInitialize?: boolean;
  hangOnPrompt?: boolean;
  ignoreCancel?: boolean;
  spawnChildPidFile?: string;
}

/**
 * The command line that runs the replay agent as a real stdio process: the build's main.js
 * (`npm run build`), named by its full path, so the agent runs from any working directory (an
 * execution's workspace).
 */
export const replayAgentCommand = (
  recordingPath: string,
  options: ReplayCommandOptions = {},
): { command: string; args: string[] } => {
  const args = [join(dirname(compiledPath(__filename)), 'main.js'), recordingPath];
  if (options.pace !== undefined) args.push('--pace', String(options.pace));
  if (options.crashAfterFrames !== undefined)
    args.push('--crash-after', String(options.crashAfterFrames));
  if (options.hangOnInitialize) args.push('--hang-on-initialize');
  if (options.hangOnPrompt) args.push('--hang-on-prompt');
  if (options.ignoreCancel) args.push('--ignore-cancel');
  if (options.spawnChildPidFile !== undefined)
    args.push('--spawn-child', options.spawnChildPidFile);
  return { command: process.execPath, args };
};
