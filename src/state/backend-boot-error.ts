/**
 * A state backend that cannot be used at boot (missing credentials or region, nothing listening at
 * the endpoint, access refused). Its message is one plain line naming what is missing; the CLI
 * prints it without a stack (boot-failure.ts), since it is the operator's to fix, not a bug.
 */
export class BackendBootError extends Error {
  constructor(message: string, cause?: unknown) {
    super(message, { cause });
    this.name = 'BackendBootError';
  }
}

/** What the AWS SDK threw while preparing the DynamoDB table, as a BackendBootError. */
export function dynamoDbBootError(err: unknown, where: { table: string; endpoint?: string; region?: string }): BackendBootError {
  const e = err as { name?: string; code?: string; message?: string; $metadata?: { httpStatusCode?: number } };
  const message = (e?.message ?? String(err)).split('\n')[0];
  const at = where.endpoint ? `at TA_DYNAMODB_ENDPOINT=${where.endpoint}` : `in AWS_REGION=${where.region ?? '(unset)'}`;
  let text: string;
  if (e?.name === 'CredentialsProviderError' || /could not load credentials/i.test(message)) {
    text = 'DynamoDB: no AWS credentials found (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, or run with an IAM role)';
  } else if (/region is missing/i.test(message)) {
    text = 'DynamoDB: AWS_REGION is missing';
  } else if (
    /ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|ECONNRESET|EHOSTUNREACH|ENETUNREACH/.test(`${e?.code ?? ''} ${message}`) ||
    e?.name === 'TimeoutError'
  ) {
    text = `DynamoDB is unreachable ${at} (${e?.code ?? message})`;
  } else {
    text = `DynamoDB refused to prepare table ${where.table} ${at}: ${message}`;
  }
  return new BackendBootError(text, err);
}
