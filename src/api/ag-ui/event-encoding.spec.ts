import { prefersProtobuf } from './event-encoding';

const PROTO = 'application/vnd.ag-ui.event+proto';

describe('prefersProtobuf (Accept of an AG-UI run)', () => {
  it.each([
    [undefined, 'no Accept'],
    ['', 'an empty Accept'],
    ['*/*', 'curl and fetch by default'],
    ['text/event-stream', 'HttpAgent'],
    [`${PROTO}, text/event-stream`, 'a tie'],
    [`text/event-stream, ${PROTO}`, 'a tie, the other order'],
    [`${PROTO};q=0.9, text/event-stream`, 'SSE preferred'],
    [`${PROTO};q=0.5, */*`, '*/* gives SSE the higher q'],
    [`${PROTO};q=0, */*`, 'protobuf refused'],
    ['application/json', 'neither'],
    [`text/*;q=0.8, ${PROTO};q=0.8`, 'a tie through a subtype wildcard'],
    [`${PROTO};q=abc`, 'an unreadable q'],
    [`${PROTO};q=1.5`, 'a q out of range'],
  ])('SSE for %p (%s)', (accept, why) => {
    expect([why, prefersProtobuf(accept)]).toEqual([why, false]);
  });

  it.each([
    [PROTO, 'protobuf only'],
    [`${PROTO}, */*;q=0.8`, 'protobuf over the rest'],
    [`text/event-stream;q=0.5, ${PROTO}`, 'a higher q'],
    [`text/event-stream;q=0.5, */*;q=0.1, ${PROTO}`, 'the most specific range decides each type'],
    [`TEXT/EVENT-STREAM ; Q=0.2 , Application/Vnd.AG-UI.Event+Proto`, 'case and spaces'],
    [`text/event-stream;q=0, */*`, 'SSE refused'],
    ['application/*', 'a type wildcard that SSE does not match'],
    [`text/event-stream;charset=utf-8;q=0.3, ${PROTO};q=0.4`, 'other parameters are ignored'],
  ])('protobuf for %p (%s)', (accept, why) => {
    expect([why, prefersProtobuf(accept)]).toEqual([why, true]);
  });
});
