/**
 * Imports a module a user names by path (a task file), TypeScript included. The CLI runs
 * from a bundle without module hooks (bin/bundle.mjs); bin/a3r.js leaves a function that
 * registers them (bin/ts-hooks.mjs), called here once, before the first such import.
 * Elsewhere (tests, the hooks fallback, tsx) TypeScript already loads and this is import().
 */
const registerKey = Symbol.for("a3r.registerTypeScript");

export async function importUserModule(url: string): Promise<unknown> {
  const holder = globalThis as { [registerKey]?: () => void };
  const registerTypeScript = holder[registerKey];
  if (registerTypeScript) {
    delete holder[registerKey];
    registerTypeScript();
  }
  return import(url);
}
