import { SetMetadata } from '@nestjs/common';

export const IS_PUBLIC = 'ta:public';

/** Routes open without a token: health, openapi.json and docs (API.md §4). */
export const Public = () => SetMetadata(IS_PUBLIC, true);

/** Per controller class, per handler: whether the route is @Public (fixed once the class is made). */
const publicRoutes = new WeakMap<object, WeakMap<object, boolean>>();

/** Whether a route is @Public, on its handler or its class; looked up once per route, not on every request. */
export function isPublicRoute(handler: object, controller: object): boolean {
  let ofClass = publicRoutes.get(controller);
  if (!ofClass) publicRoutes.set(controller, (ofClass = new WeakMap()));
  let open = ofClass.get(handler);
  if (open === undefined) {
    open = Boolean(Reflect.getMetadata(IS_PUBLIC, handler) ?? Reflect.getMetadata(IS_PUBLIC, controller));
    ofClass.set(handler, open);
  }
  return open;
}
