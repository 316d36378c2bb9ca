import { SetMetadata } from '@nestjs/common';

export const IS_PUBLIC = 'ta:public';

/** Routes open without a token: health, openapi.json and docs (API.md §4). */
export const Public = () => SetMetadata(IS_PUBLIC, true);
