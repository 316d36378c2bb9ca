/**
 * How far two replicas' estimates of DynamoDB's clock may disagree. The only server time DynamoDB
 * gives is the HTTP `Date` header of each answer, in whole seconds, so one estimate can be off by
 * half a second plus half a round trip (less once samples narrow it: store-clock.ts); two replicas
 * by twice that. The wire (dynamodb-wire.ts) hands the store's clock the `Date` of every answer,
 * errors included, timed per attempt: no call is added for it. Every lease is written this much
 * longer (docs/api.md, "Leases and clocks").
 */
export const DYNAMODB_CLOCK_SKEW_MS = 2000;
