import { z } from "zod";

const delegates = new WeakMap<object, () => z.ZodType>();

/**
 * A schema that checks a value with whatever `current()` returns when it parses, issues
 * and all (their codes and paths as that schema gives them). zod's own `z.lazy` resolves
 * once, so an engine kind registered after the first parse would never be known.
 */
export function delegatingSchema<Output>(current: () => z.ZodType<Output>): z.ZodType<Output> {
  const schema = z.unknown().transform((value, context) => {
    const result = current().safeParse(value);
    if (result.success) return result.data;
    for (const issue of result.error.issues) context.addIssue(issue as Parameters<typeof context.addIssue>[0]);
    return z.NEVER;
  });
  delegates.set(schema, current);
  return schema as unknown as z.ZodType<Output>;
}

/** The schema a delegating schema checks with now; undefined for any other schema. */
export function delegateOf(schema: z.ZodType): z.ZodType | undefined {
  return delegates.get(schema)?.();
}
