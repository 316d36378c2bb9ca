/**
 * Who the console calls the API as. Dev auth: nobody to sign in (an optional X-Dev-User). Entra:
 * a bearer token pasted by the user, or obtained through MSAL's redirect flow when the server
 * names a client id (TA_CONSOLE_CLIENT_ID). MSAL is loaded only then (its own chunk).
 */
export interface MsalSettings {
  client_id: string;
  authority: string;
  scopes: string[];
}

const TOKEN_KEY = 'ta.console.token';
const USER_KEY = 'ta.console.devUser';
let token = sessionStorage.getItem(TOKEN_KEY) ?? '';
let devUser = sessionStorage.getItem(USER_KEY) ?? '';

export function authHeaders(): Record<string, string> {
  const h: Record<string, string> = {};
  if (token) h.authorization = `Bearer ${token}`;
  if (devUser) h['x-dev-user'] = devUser;
  return h;
}

export function currentToken(): string {
  return token;
}

export function setToken(value: string): void {
  token = value.trim().replace(/^Bearer\s+/i, '');
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
}

export function currentDevUser(): string {
  return devUser;
}

export function setDevUser(value: string): void {
  devUser = value.trim();
  if (devUser) sessionStorage.setItem(USER_KEY, devUser);
  else sessionStorage.removeItem(USER_KEY);
}

type Pca = import('@azure/msal-browser').IPublicClientApplication;
let pca: Promise<Pca> | undefined;

function client(s: MsalSettings): Promise<Pca> {
  pca ??= import('@azure/msal-browser').then(({ createStandardPublicClientApplication }) =>
    createStandardPublicClientApplication({
      auth: { clientId: s.client_id, authority: s.authority, redirectUri: `${location.origin}/console` },
      cache: { cacheLocation: 'sessionStorage' },
    }),
  );
  return pca;
}

/** After MSAL's redirect back (or with a signed-in account): a fresh token, or undefined. */
export async function msalToken(s: MsalSettings): Promise<string | undefined> {
  const app = await client(s);
  const redirect = await app.handleRedirectPromise();
  const account = redirect?.account ?? app.getAllAccounts()[0];
  if (!account) return undefined;
  const result = redirect?.accessToken ? redirect : await app.acquireTokenSilent({ scopes: s.scopes, account });
  setToken(result.accessToken);
  return result.accessToken;
}

export async function msalSignIn(s: MsalSettings): Promise<void> {
  await (await client(s)).loginRedirect({ scopes: s.scopes });
}
