/**
 * Baton's live activity page: sign in with a token, watch the tenant's tasks and sessions over
 * /ws with @baton/client (which reconnects and resumes by itself), and work one session's queue
 * and composer. Everything shown is derived from the views by ../model.
 *
 * This file signs in and out; app.ts is the page once signed in, and its parts each have a file:
 * task-list.ts (the board and the tasks), session-panel.ts, composer.ts and timeline-panel.ts.
 */
import { canPrompt, tokenClaims } from '../model';
import { App } from './app';
import { byId, setText } from './dom';
import { listTasks } from './rest';
import { storage } from './storage';
import './styles.css';

/** A `?token=` link signs in once; the token must not stay in the address bar or history. */
function takeTokenFromUrl(): string | null {
  const url = new URL(location.href);
  const token = url.searchParams.get('token');
  if (token === null) return null;
  url.searchParams.delete('token');
  history.replaceState(history.state, '', `${url.pathname}${url.search}${url.hash}`);
  return token.trim() || null;
}

let app: App | null = null;

function showSignIn(message: string): void {
  app?.stop();
  app = null;
  byId('app').hidden = true;
  byId('who').hidden = true;
  byId('sign-out').hidden = true;
  byId('banner').hidden = true;
  byId('sign-in').hidden = false;
  setText(byId('sign-in-error'), message);
  byId<HTMLInputElement>('token').focus();
}

async function signIn(token: string): Promise<void> {
  setText(byId('sign-in-error'), '');
  const check = await listTasks(token);
  if (!check.ok) {
    // A refused token is forgotten; an unreachable gateway keeps it for a reload.
    if (check.refused) storage.set(null);
    showSignIn(check.message);
    return;
  }
  storage.set(token);
  byId('sign-in').hidden = true;
  byId('app').hidden = false;
  const claims = tokenClaims(token);
  const who = byId('who');
  setText(
    who,
    claims.tenant
      ? `Tenant ${claims.tenant}${claims.scopes ? ` · ${claims.scopes.join(', ')}` : ''}`
      : 'Signed in',
  );
  who.hidden = false;
  byId('sign-out').hidden = false;
  app?.stop(); // a second sign-in (a double submit) replaces the first
  app = new App(token, canPrompt(claims.scopes), showSignIn);
  app.start(check.tasks);
}

function boot(): void {
  byId<HTMLFormElement>('sign-in-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const input = byId<HTMLInputElement>('token');
    const token = input.value.trim();
    if (!token) return;
    input.value = '';
    void signIn(token);
  });
  byId('sign-out').addEventListener('click', () => {
    storage.set(null);
    // What was selected belongs to the tenant that signed out.
    history.replaceState(null, '', location.pathname);
    showSignIn('');
  });
  const token = takeTokenFromUrl() ?? storage.get();
  if (token) void signIn(token);
  else showSignIn('');
}

boot();
