/**
 * Where the global filter reports a state store failure it answers (STATE_STORE_UNAVAILABLE or
 * STATE_CORRUPT). The app gives it the Telemetry, which counts them (`ta.state_store.errors`); the
 * filter knows only this port, so `common` depends on nothing above it.
 */
export interface StoreErrorCounter {
  recordStoreError(code: string): void;
}
