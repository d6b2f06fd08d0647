/** The composer: prompts the selected session (sent, or queued behind the turn under way). */
import type { Update } from '@baton/protocol';
import { composerMode, decisionText, type ComposerMode } from '../model';
import { byId, setAttrs, setText } from './dom';
import type { Page } from './page';

export class Composer {
  private sending = false;
  /** The last prompt sent from the composer: its later decisions (queued → admitted) show too. */
  private lastPrompt: { taskId: string; promptId: string } | null = null;

  constructor(private readonly page: Page) {}

  start(): void {
    this.page.listen(byId('composer'), 'submit', (ev) => {
      ev.preventDefault();
      void this.submit();
    });
    this.page.listen(byId('prompt'), 'keydown', (ev) => {
      const k = ev as KeyboardEvent;
      if (k.key === 'Enter' && (k.ctrlKey || k.metaKey)) {
        k.preventDefault();
        void this.submit();
      }
    });
    this.page.listen(byId('prompt'), 'input', () => this.page.schedule());
  }

  /** An update: the decision on the last prompt sent from here is shown. */
  updated(u: Update): void {
    const last = this.lastPrompt;
    if (u.type !== 'prompt.decided' || !last) return;
    if (u.taskId !== last.taskId || u.data.promptId !== last.promptId) return;
    setText(byId('composer-result'), decisionText(u.data.decision));
  }

  private currentMode(): ComposerMode {
    const { view, session } = this.page.selectedSession();
    return composerMode(session, {
      canPrompt: this.page.canPrompt,
      online: this.page.connection === 'live',
      deleted: this.page.selectedSeen && !session,
      ...(view ? { taskStatus: view.status } : {}),
    });
  }

  render(): void {
    const mode = this.currentMode();
    const form = byId('composer');
    const button = byId<HTMLButtonElement>('composer-submit');
    const textarea = byId<HTMLTextAreaElement>('prompt');
    setAttrs(form, { 'data-mode': mode.kind });
    setText(button, this.sending ? 'Sending…' : mode.kind === 'queue' ? 'Queue' : 'Send');
    setAttrs(button, {
      disabled: mode.kind === 'unavailable' || this.sending,
      'aria-describedby': 'composer-hint',
    });
    setAttrs(textarea, { disabled: mode.kind === 'unavailable' && mode.reason !== 'offline' });
    const badge = byId('composer-badge');
    badge.hidden = mode.kind !== 'queue';
    setText(badge, mode.kind === 'queue' ? `Will be queued · position ${mode.position}` : '');
    setText(
      byId('composer-hint'),
      mode.kind === 'unavailable' ? `Unavailable: ${mode.hint}` : mode.hint,
    );
  }

  private async submit(): Promise<void> {
    const sel = this.page.selected;
    const textarea = byId<HTMLTextAreaElement>('prompt');
    const text = textarea.value.trim();
    const mode = this.currentMode();
    if (!sel || !text || mode.kind === 'unavailable' || this.sending) return;
    const result = byId('composer-result');
    this.sending = true;
    textarea.value = '';
    setText(result, mode.kind === 'queue' ? 'Queueing…' : 'Sending…');
    this.page.schedule();
    let pending = false;
    try {
      const d = await this.page.client.prompt(
        { taskId: sel.taskId, sessionId: sel.sessionId, text },
        {
          onPending: () => {
            pending = true;
            this.sending = false;
            setText(result, 'Accepted; waiting for its decision…');
            this.page.schedule();
          },
        },
      );
      this.lastPrompt = { taskId: d.taskId, promptId: d.promptId };
      setText(result, decisionText(d.decision));
    } catch (err) {
      if (!textarea.value) textarea.value = text;
      setText(result, `Not sent: ${(err as Error).message}`);
    } finally {
      if (!pending) this.sending = false;
      this.page.schedule();
    }
  }
}
