import { IsIn, IsOptional, IsString, registerDecorator } from 'class-validator';

export const CONTENT_TYPES = ['text', 'image'] as const;
export type ContentType = (typeof CONTENT_TYPES)[number];

/** An image must be an inline `data:` URI; a URL would make the server fetch on the caller's behalf. */
export const DATA_URI = /^data:image\/[a-zA-Z0-9.+-]+;base64,[A-Za-z0-9+/=\s]+$/;

function IsDataUriWhenImage(): PropertyDecorator {
  return (target, propertyName) =>
    registerDecorator({
      name: 'isDataUriWhenImage',
      target: target.constructor,
      propertyName: propertyName as string,
      options: { message: 'an image item must be a data:image/...;base64, URI' },
      validator: {
        validate: (value: unknown, args) =>
          (args?.object as MultiModalItemDto).content_type !== 'image' || (typeof value === 'string' && DATA_URI.test(value)),
      },
    });
}

/** `MultiModalItem {content_type: "text"|"image", content}` (API.md §3). */
export class MultiModalItemDto {
  @IsOptional() @IsIn(CONTENT_TYPES, { message: 'content_type must be "text" or "image"' })
  content_type: ContentType = 'text';

  @IsString({ message: 'content must be a string' })
  @IsDataUriWhenImage()
  content!: string;
}
