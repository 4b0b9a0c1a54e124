import { resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The folder this checkout of a3r lies in (where bin/, examples/ and skills/ are). */
export const checkoutRoot = resolve(fileURLToPath(new URL("..", import.meta.url)));
