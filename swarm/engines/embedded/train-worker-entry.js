// Worker threads do not inherit tsx's loader from the thread that starts them; this plain
// JavaScript entry registers it and then loads the TypeScript worker.
import { register } from "tsx/esm/api";

register();
await import("./train-worker.ts");
