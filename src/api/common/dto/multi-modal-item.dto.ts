import { IsIn, IsOptional, IsString, registerDecorator } from '../../../common/validation/class-validator-parts';
import { imageDataUriProblem } from './image-data-uri';

export const CONTENT_TYPES = ['text', 'image'] as const;
export type ContentType = (typeof CONTENT_TYPES)[number];

/** An image must be an inline `data:` URI; a URL would make the server fetch on the caller's behalf (checked in full by image-data-uri.ts). */
export const DATA_URI = /^data:image\/[a-zA-Z0-9.+-]+;base64,[A-Za-z0-9+/=\s]+$/;

function IsDataUriWhenImage(): PropertyDecorator {
  return (target, propertyName) =>
    registerDecorator({
      name: 'isDataUriWhenImage',
      target: target.constructor,
      propertyName: propertyName as string,
      options: { message: ({ value }) => imageDataUriProblem(value) ?? 'an image item must be a data:image/...;base64, URI' },
      validator: {
        validate: (value: unknown, args) => (args?.object as MultiModalItemDto).content_type !== 'image' || imageDataUriProblem(value) === undefined,
      },
    });
}

/** `MultiModalItem {content_type: "text"|"image", content}` (API.md §3). */
export class MultiModalItemDto {
  @IsOptional()
  @IsIn(CONTENT_TYPES, { message: 'content_type must be "text" or "image"' })
  content_type: ContentType = 'text';

  @IsString({ message: 'content must be a string' })
  @IsDataUriWhenImage()
  content!: string;
}
