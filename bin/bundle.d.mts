/** See bin/bundle.mjs. */
export function bundledEntry(options?: { root?: string; entry?: string }): Promise<string | undefined>;
