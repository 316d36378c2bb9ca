import type { Response } from 'express';

/**
 * A signal that fires when the client closes the connection before the response was sent. A
 * stateless answer nobody can receive is not worth paying the model for: nothing is stored.
 */
export function abortOnDisconnect(res: Response): AbortSignal {
  const controller = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) controller.abort(new Error('client disconnected'));
  });
  return controller.signal;
}
