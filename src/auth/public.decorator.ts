import { SetMetadata } from '@nestjs/common';
import { routeMetadata } from '../common/http/route-metadata';

export const IS_PUBLIC = 'ta:public';

/** Routes open without a token: health, openapi.json and docs (API.md §4). */
export const Public = () => SetMetadata(IS_PUBLIC, true);

/** Whether a route is @Public, on its handler or its class (read once per route: routeMetadata). */
export function isPublicRoute(handler: object, controller: object): boolean {
  return Boolean(routeMetadata<boolean>(IS_PUBLIC, handler) ?? routeMetadata<boolean>(IS_PUBLIC, controller));
}
