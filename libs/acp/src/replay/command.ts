import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

export interface ReplayCommandOptions {
  pace?: number;
  crashAfterFrames?: number;
  hangOnInitialize?: boolean;
  hangOnPrompt?: boolean;
  ignoreCancel?: boolean;
  spawnChildPidFile?: string;
}

/**
 * The command line that runs the replay agent as a real stdio process (node + tsx). tsx is named
 * by its file, so the agent runs from any working directory (an execution's workspace).
 */
export const replayAgentCommand = (
  recordingPath: string,
  options: ReplayCommandOptions = {},
): { command: string; args: string[] } => {
  const tsx = pathToFileURL(require.resolve('tsx')).href;
  const args = ['--import', tsx, join(__dirname, 'main.ts'), recordingPath];
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
