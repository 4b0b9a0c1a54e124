/**
 * Standard normal draws from a seed (xorshift32 and Box-Muller): simulations that must give
 * the same figure every run (the sequential design's error check, the research bench's
 * simulated campaigns). Not for anything an attacker may predict or a model trains on.
 */
export function seededNormal(seed: number): () => number {
  let state = seed >>> 0 || 1;
  const uniform = (): number => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return ((state >>> 0) + 0.5) / 4294967296;
  };
  return () => Math.sqrt(-2 * Math.log(uniform())) * Math.cos(2 * Math.PI * uniform());
}
