/**
 * TypeScript types of decoded methods, derived from METHOD_DEFINITIONS so
 * that adding a method or argument to the table is the only edit needed.
 *
 * A decoded method is a discriminated union on `name`:
 *   { name: 'basic.publish', classId: 60, methodId: 40,
 *     exchange: string, routingKey: string, mandatory: boolean, immediate: boolean }
 *
 * Argument domains map to JS as follows:
 *   octet, short, long → number       shortstr → string (strict UTF-8)
 *   longlong           → number       longstr  → Buffer (may be binary: SASL responses)
 *   bit                → boolean      table    → FieldTable (tagged values)
 * longlong is a number, not a bigint: its only uses are delivery tags, which
 * Cairn issues counting from 1 per channel and cannot exceed 2^53 in practice
 * (28 years at 10 million deliveries a second). Decoding a larger value
 * throws VALUE_OUT_OF_RANGE rather than silently rounding it.
 */
import type { FieldTable } from './field-codec.js';
import type { METHOD_DEFINITIONS, MethodFieldType } from './method-definitions.js';

interface MethodFieldValues {
  octet: number;
  short: number;
  long: number;
  longlong: number;
  shortstr: string;
  longstr: Buffer;
  bit: boolean;
  table: FieldTable;
}

/** The JS type of one argument domain. */
export type MethodFieldValue<T extends MethodFieldType> = MethodFieldValues[T];

type Definition = (typeof METHOD_DEFINITIONS)[number];

type Simplify<T> = { [K in keyof T]: T[K] } & {};

type ArgumentsOf<D extends Definition> = {
  readonly [F in D['fields'][number] as F[0] extends string ? F[0] : never]: MethodFieldValues[F[1]];
};

type MethodOf<D extends Definition> = Simplify<
  { readonly name: D['name']; readonly classId: D['classId']; readonly methodId: D['methodId'] } & ArgumentsOf<D>
>;

/** Any decoded method: a union discriminated by `name`. */
export type AmqpMethod = Definition extends infer D ? (D extends Definition ? MethodOf<D> : never) : never;

/** 'connection.start' | ... | 'tx.rollback-ok'. */
export type AmqpMethodName = AmqpMethod['name'];

/** One method's type by name: AmqpMethodNamed<'basic.deliver'>. */
export type AmqpMethodNamed<N extends AmqpMethodName> = Extract<AmqpMethod, { readonly name: N }>;

/**
 * What encodeMethod takes: a method without its ids, which follow from the
 * name. A decoded AmqpMethod is assignable to it, so decoded methods re-encode.
 */
export type AmqpMethodInput = AmqpMethod extends infer M
  ? M extends AmqpMethod
    ? Simplify<Omit<M, 'classId' | 'methodId'>>
    : never
  : never;

/** The methods followed by a content header and body frames. */
export type ContentMethodName = Extract<Definition, { readonly hasContent: true }>['name'];
export type ContentMethodInput = Extract<AmqpMethodInput, { readonly name: ContentMethodName }>;
