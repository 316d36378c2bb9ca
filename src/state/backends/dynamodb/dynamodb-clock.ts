import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { StoreClock } from '../../store-clock';

/**
 * How far two replicas' estimates of DynamoDB's clock may disagree. The only server time DynamoDB
 * gives is the HTTP `Date` header of each answer, in whole seconds, so one estimate can be off by
 * half a second plus half a round trip (less once samples narrow it: store-clock.ts); two replicas
 * by twice that. Every lease is written this much longer (docs/api.md, "Leases and clocks").
 */
export const DYNAMODB_CLOCK_SKEW_MS = 2000;

/**
 * Feeds `clock` the `Date` header of every answer the client gets, errors included, timed per
 * attempt: the middleware sits below the deserializer (and so below retries), right on the wire.
 * No call is added: every read and write the store makes already carries a sample.
 */
export function sampleDateHeaders(client: DynamoDBClient, clock: StoreClock): void {
  client.middlewareStack.add(
    (next) => async (args) => {
      const sentAt = Date.now();
      const result = await next(args);
      const date = (result.response as { headers?: Record<string, string | undefined> } | undefined)?.headers?.date;
      if (date) clock.observe(Date.parse(date), sentAt, Date.now());
      return result;
    },
    { step: 'deserialize', priority: 'low', name: 'taStoreClockMiddleware' },
  );
}
