/** The signed-in token, kept for this tab (sessionStorage) so that a reload stays signed in. */
const TOKEN_KEY = 'baton.token';

export const storage = {
  get(): string | null {
    try {
      return sessionStorage.getItem(TOKEN_KEY);
    } catch {
      return null;
    }
  },
  set(token: string | null): void {
    try {
      if (token === null) sessionStorage.removeItem(TOKEN_KEY);
      else sessionStorage.setItem(TOKEN_KEY, token);
    } catch {
      // Storage disabled: the page still works until it is reloaded.
    }
  },
};
