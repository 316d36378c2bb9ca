import 'reflect-metadata';
import { isPublicRoute, Public } from './public.decorator';

describe('isPublicRoute', () => {
  it('is true for a @Public handler or a handler of a @Public class, false otherwise; looked up once per route', () => {
    class Mixed {
      @Public()
      open() {}
      closed() {}
    }
    @Public()
    class AllOpen {
      any() {}
    }
    const read = jest.spyOn(Reflect, 'getMetadata');
    for (let i = 0; i < 3; i++) {
      expect(isPublicRoute(Mixed.prototype.open, Mixed)).toBe(true);
      expect(isPublicRoute(Mixed.prototype.closed, Mixed)).toBe(false);
      expect(isPublicRoute(AllOpen.prototype.any, AllOpen)).toBe(true);
    }
    // open: its handler's; closed and any: the handler's, then the class's. The first time only.
    expect(read.mock.calls.length).toBe(5);
    read.mockRestore();
  });
});
