/**
 * Who the console calls the service as: a dev user name under dev auth, else a pasted bearer token
 * or an MSAL sign-in. Values are saved on change (auth.ts), so typing alone sends nothing new.
 */
import { useState } from 'preact/hooks';
import type { ConsoleConfig } from './api';
import { currentDevUser, currentToken, msalSignIn, setDevUser, setToken } from './auth';

export function AuthBar({ config, note }: { config: ConsoleConfig; note: string }) {
  const [token, setTokenText] = useState(currentToken());
  const [user, setUser] = useState(currentDevUser());
  if (config.auth_mode === 'dev')
    return (
      <span class="auth">
        <span class="muted small">dev auth, user</span>
        <input
          data-testid="dev-user"
          placeholder="(default)"
          value={user}
          onChange={(e) => setDevUser((e.target as HTMLInputElement).value)}
          onInput={(e) => setUser((e.target as HTMLInputElement).value)}
        />
        {note && <span class="error small">{note}</span>}
      </span>
    );
  return (
    <span class="auth">
      {config.msal && (
        <button data-testid="sign-in" onClick={() => msalSignIn(config.msal!)}>
          Sign in
        </button>
      )}
      <input
        data-testid="token"
        type="password"
        placeholder="paste a bearer token"
        value={token}
        onInput={(e) => setTokenText((e.target as HTMLInputElement).value)}
        onChange={(e) => setToken((e.target as HTMLInputElement).value)}
      />
      <span class="muted small">{currentToken() ? 'token set' : 'no token'}</span>
      {note && <span class="error small">{note}</span>}
    </span>
  );
}
