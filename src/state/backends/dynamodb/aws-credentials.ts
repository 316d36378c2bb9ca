import { AwsCredentials } from './aws-sigv4';

/** Credentials as given (DynamoDB Local, tests), or a provider of them. */
export type CredentialsOption = AwsCredentials | (() => Promise<AwsCredentials>);

/** Temporary credentials are resolved again this long before they expire. */
const REFRESH_BEFORE_MS = 5 * 60_000;

/**
 * Where the DynamoDB wire's credentials come from, in the AWS SDK's order: the ones given; else
 * `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` (with `AWS_SESSION_TOKEN`) unless `AWS_PROFILE`
 * names a profile, as the SDK's default chain reads them first; else that chain itself
 * (`@aws-sdk/credential-provider-node`: profiles and SSO, web identity for EKS, the ECS and EC2
 * instance roles), loaded only then. Resolved once and kept; expiring ones again 5 minutes before
 * they expire, one resolution at a time.
 */
export function credentialSource(given?: CredentialsOption, env: NodeJS.ProcessEnv = process.env): () => Promise<AwsCredentials> {
  if (given && typeof given !== 'function') return () => Promise.resolve(given);
  let provider = given;
  if (!provider && env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY && !env.AWS_PROFILE) {
    const fromEnv: AwsCredentials = { accessKeyId: env.AWS_ACCESS_KEY_ID, secretAccessKey: env.AWS_SECRET_ACCESS_KEY };
    if (env.AWS_SESSION_TOKEN) fromEnv.sessionToken = env.AWS_SESSION_TOKEN;
    if (env.AWS_CREDENTIAL_EXPIRATION) fromEnv.expiration = new Date(env.AWS_CREDENTIAL_EXPIRATION);
    if (!fromEnv.expiration) return () => Promise.resolve(fromEnv);
    provider = () => Promise.resolve(fromEnv);
  }
  const resolve =
    provider ??
    (() => {
      const { defaultProvider } = require('@aws-sdk/credential-provider-node') as typeof import('@aws-sdk/credential-provider-node');
      const chain = defaultProvider();
      return () => chain() as Promise<AwsCredentials>;
    })();
  let current: AwsCredentials | undefined;
  let pending: Promise<AwsCredentials> | undefined;
  return () => {
    if (current && (!current.expiration || current.expiration.getTime() - Date.now() > REFRESH_BEFORE_MS)) return Promise.resolve(current);
    return (pending ??= resolve().then(
      (c) => {
        pending = undefined;
        return (current = c);
      },
      (err: unknown) => {
        pending = undefined;
        throw err;
      },
    ));
  };
}
