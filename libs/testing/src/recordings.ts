// Reading a recording as the replay agent plays it.
import type { Frame } from '@baton/acp';

/**
 * Each recorded prompt (its Baton promptId and admission generation), with how many agent frames
 * the recording shows before it was sent: a test hands it over once the replay got that far.
 */
export const recordedPrompts = (frames: Frame[]) => {
  let seen = 0;
  return frames.flatMap((f) => {
    if (f.direction === 'agent->client') seen++;
    const m = f.message as {
      method?: string;
      params?: { _meta?: { baton?: { promptId: string; admissionGeneration: number } } };
    };
    const b = m.params?._meta?.baton;
    return f.direction === 'client->agent' && m.method === 'session/prompt' && b
      ? [{ ...b, after: seen }]
      : [];
  });
};
