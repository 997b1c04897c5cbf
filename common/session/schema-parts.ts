// TypeBox helpers the Session schema's parts share (common/session/schema.ts, status-schema.ts).
import { Type, type TSchema } from '@sinclair/typebox';

export const enumOf = <T extends readonly string[]>(values: T, description: string): TSchema & { static: T[number] } =>
  ({ ...Type.Unsafe<T[number]>({ type: 'string', enum: [...values], description }) }) as never;

export const text = (maxLength: number, description: string) => Type.String({ maxLength, description });
export const timestamp = (description: string) => Type.String({ format: 'date-time', description });
export const immutable = (message: string) => ({ 'x-kubernetes-validations': [{ rule: 'self == oldSelf', message }] });
