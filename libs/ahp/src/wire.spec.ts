import { AHP_ERRORS, chatUri, negotiateAhpVersion, parseChatUri } from './wire';

describe('AHP version negotiation', () => {
  it.each([
    [['1.0.0'], '1.0.0'],
    [['0.9.0'], '0.9.0'],
    [['0.9.3'], '0.9.3'],
    [['1.2.0', '1.0.0'], '1.2.0'],
    [['1.0.0', '1.4.1'], '1.4.1'],
    [['2.0.0', '1.0.0'], '1.0.0'],
    [['0.9.0', '1.0.0'], '1.0.0'],
    [['0.10.0', '0.9.1'], '0.9.1'],
  ])('%j picks %s (the highest offered inside a caret range of a baseline)', (offered, version) => {
    expect(negotiateAhpVersion(offered)).toEqual({ ok: true, version });
  });

  it.each([[['2.0.0']], [['0.8.0']], [['0.10.0']], [['3.1.4', '0.1.0']]])(
    '%j is not supported: -32005 with the supported versions',
    (offered) => {
      const r = negotiateAhpVersion(offered);
      expect(r).toMatchObject({
        ok: false,
        code: AHP_ERRORS.UnsupportedProtocolVersion,
        data: { supportedVersions: ['1.0.0', '0.9.0'] },
      });
    },
  );

  it.each([
    [[]],
    ['1.0.0'],
    [['1.0']],
    [['v1.0.0']],
    [['1.0.0-rc.1']],
    [[1]],
    [null],
    [['01.0.0']],
  ])('%j is malformed: -32602', (offered) => {
    expect(negotiateAhpVersion(offered)).toMatchObject({
      ok: false,
      code: AHP_ERRORS.InvalidParams,
    });
  });
});

describe('Baton chat URIs', () => {
  it('name a task and a session, each percent-encoded, and read back', () => {
    for (const [t, s] of [
      ['t1', 's1'],
      ['a/b', 'c%d'],
      ['task with spaces', 'ümlaut:x'],
    ]) {
      const uri = chatUri(t!, s!);
      expect(uri.startsWith('ahp-chat:/')).toBe(true);
      expect(uri.slice('ahp-chat:/'.length).split('/')).toHaveLength(2);
      expect(parseChatUri(uri)).toEqual({ taskId: t, sessionId: s });
    }
  });

  it.each([
    'ahp-chat:/only-one',
    'ahp-chat:/a/b/c',
    'ahp-chat://a/b',
    'ahp-session:/a/b',
    'ahp-chat:/%E0%A4%A/b',
    'ahp-chat:/a/',
  ])('refuse %s', (uri) => {
    expect(parseChatUri(uri)).toBeNull();
  });
});
