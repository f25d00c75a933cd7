/**
 * The query parameters RabbitMQ's API accepts on its resources — `columns`,
 * `sort`, `sort_reverse`, and the pagination set `page`, `page_size`, `name`,
 * `use_regex` — applied to a list of JSON objects, in RabbitMQ's order:
 * filter by name, sort, page, then pick columns. Any other parameter is a
 * 400 naming it: a misspelt `sort` must not silently return unsorted data.
 *
 * Without `page` a list is a bare JSON array, as RabbitMQ answers; it is
 * capped at `listItemsMax` items, and a capped answer says so in the
 * `Cairn-Total-Count` and `Cairn-Truncated` headers (page through it instead).
 * With `page` the answer is RabbitMQ's page object
 * {filtered_count, item_count, items, page, page_count, page_size, total_count}.
 */
import { badRequest } from '../http-error.js';

export const listItemsMax = 10_000;
export const pageSizeDefault = 100;
/** RabbitMQ's own bound on page_size. */
export const pageSizeMax = 500;
/** A name filter longer than this is refused (a regex is compiled from it). */
const nameFilterCharactersMax = 1_000;

/** Accepted and ignored: Cairn keeps no sampled statistics to switch off. */
const statsParameters = ['disable_stats', 'enable_queue_totals'] as const;
export const objectParameters: readonly string[] = ['columns', ...statsParameters];
export const listParameters: readonly string[] = [...objectParameters, 'sort', 'sort_reverse', 'page', 'page_size', 'name', 'use_regex', 'pagination'];

export type Item = Readonly<Record<string, unknown>>;

export interface Listed {
  readonly body: unknown;
  readonly headers: Readonly<Record<string, string>>;
}

/** With only these parameters a list stays whole and in its order: it can be written without listAnswer. */
const wholeListParameters: readonly string[] = ['columns', ...statsParameters, 'pagination'];

/**
 * When `url` asks for the whole list with at most top-level columns (no filter, sort, page): those columns
 * (undefined: every field), which unknown names are left out of as by listAnswer. Undefined when it asks for more.
 */
export function wholeListColumns(url: URL): { readonly columns: string[] | undefined } | undefined {
  for (const name of url.searchParams.keys()) if (!wholeListParameters.includes(name)) return undefined;
  const columns = columnsOf(url);
  if (columns?.some((path) => path.length !== 1)) return undefined;
  return { columns: columns?.map((path) => path[0]!) };
}

export function checkParameters(url: URL, accepted: readonly string[]): void {
  for (const name of url.searchParams.keys()) {
    if (!accepted.includes(name)) {
      throw badRequest(`unknown query parameter '${name}' for ${url.pathname}; accepted: ${accepted.length > 0 ? accepted.join(', ') : 'none'}`);
    }
  }
}

/** One object (GET of a single resource, or /api/overview): only `columns` applies. */
export function objectAnswer(item: Item, url: URL): Item {
  checkParameters(url, objectParameters);
  return pickColumns(item, columnsOf(url));
}

export function listAnswer(items: readonly Item[], url: URL): Listed {
  checkParameters(url, listParameters);
  const parameters = url.searchParams;
  const filtered = filterByName(items, parameters.get('name'), booleanParameter(parameters, 'use_regex'));
  const sortKey = parameters.get('sort');
  const sorted = sortKey === null || sortKey === '' ? filtered : sortBy(filtered, sortKey, booleanParameter(parameters, 'sort_reverse'));
  const columns = columnsOf(url);
  const page = parameters.get('page');
  if (page === null) {
    const kept = sorted.length > listItemsMax ? sorted.slice(0, listItemsMax) : sorted;
    const headers: Record<string, string> = sorted.length > listItemsMax ? { 'Cairn-Total-Count': String(sorted.length), 'Cairn-Truncated': 'true' } : {};
    return { body: kept.map((item) => pickColumns(item, columns)), headers };
  }
  const pageNumber = positiveInteger(page, 'page', Number.MAX_SAFE_INTEGER);
  const pageSize = positiveInteger(parameters.get('page_size') ?? String(pageSizeDefault), 'page_size', pageSizeMax);
  const pageCount = Math.max(1, Math.ceil(sorted.length / pageSize));
  if (pageNumber > pageCount) throw badRequest(`page ${pageNumber} is past the last page (${pageCount} of ${pageSize} items)`);
  const pageItems = sorted.slice((pageNumber - 1) * pageSize, pageNumber * pageSize).map((item) => pickColumns(item, columns));
  return {
    body: { filtered_count: sorted.length, item_count: pageItems.length, items: pageItems, page: pageNumber, page_count: pageCount, page_size: pageSize, total_count: items.length },
    headers: {},
  };
}

function booleanParameter(parameters: URLSearchParams, name: string): boolean {
  const value = parameters.get(name);
  if (value === null || value === 'false') return false;
  if (value === 'true' || value === '') return true;
  throw badRequest(`query parameter '${name}' must be true or false, got '${value}'`);
}

function positiveInteger(text: string, name: string, max: number): number {
  const value = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(value) || value < 1 || value > max) throw badRequest(`query parameter '${name}' must be an integer from 1 to ${max}, got '${text}'`);
  return value;
}

function filterByName(items: readonly Item[], name: string | null, useRegex: boolean): readonly Item[] {
  if (name === null || name === '') return items;
  if (name.length > nameFilterCharactersMax) throw badRequest(`query parameter 'name' is longer than ${nameFilterCharactersMax} characters`);
  let matches: (text: string) => boolean;
  if (useRegex) {
    let pattern: RegExp;
    try {
      pattern = new RegExp(name);
    } catch (error: unknown) {
      throw badRequest(`query parameter 'name' is not a valid regular expression: ${error instanceof Error ? error.message : String(error)}`);
    }
    matches = (text) => pattern.test(text);
  } else {
    const lower = name.toLowerCase();
    matches = (text) => text.toLowerCase().includes(lower);
  }
  return items.filter((item) => typeof item['name'] === 'string' && matches(item['name']));
}

function valueAt(item: Item, path: readonly string[]): unknown {
  let value: unknown = item;
  for (const part of path) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Item)[part];
  }
  return value;
}

function compareValues(a: unknown, b: unknown): number {
  if (a === b) return 0;
  if (a === undefined || a === null) return -1;
  if (b === undefined || b === null) return 1;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  const left = String(a);
  const right = String(b);
  return left < right ? -1 : left > right ? 1 : 0;
}

function sortBy(items: readonly Item[], key: string, reverse: boolean): Item[] {
  const path = key.split('.');
  const sorted = [...items].sort((a, b) => compareValues(valueAt(a, path), valueAt(b, path)));
  return reverse ? sorted.reverse() : sorted;
}

function columnsOf(url: URL): string[][] | undefined {
  const columns = url.searchParams.get('columns');
  if (columns === null || columns === '') return undefined;
  // A column is a path of own field names; __proto__ and friends are never fields.
  return columns.split(',').map((column) => column.split('.')).filter((path) => !path.some((part) => forbiddenKeys.has(part)));
}

const forbiddenKeys = new Set(['__proto__', 'constructor', 'prototype']);

/** Only the named fields (dotted paths reach into objects: queue_totals.messages). */
function pickColumns(item: Item, columns: string[][] | undefined): Item {
  if (columns === undefined) return item;
  const picked: Record<string, unknown> = {};
  for (const path of columns) {
    const value = valueAt(item, path);
    if (value === undefined) continue;
    let target = picked;
    for (const part of path.slice(0, -1)) {
      const next = target[part];
      target = (typeof next === 'object' && next !== null ? next : (target[part] = {})) as Record<string, unknown>;
    }
    target[path[path.length - 1]!] = value;
  }
  return picked;
}
