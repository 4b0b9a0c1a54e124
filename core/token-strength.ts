/**
 * Whether a secret token (the swarm server's admin token) is hard to guess. Length alone
 * passes 24 spaces or "aaaa...": this estimates the token's information as its length
 * times the Shannon entropy of its own characters, which a random hex or base64 token
 * reaches easily (48 hex characters: about 190 bits) and a repeated or patterned one does
 * not. One pass over the token: linear in its length.
 */
export const minimumTokenBits = 96;

/** Why the token is weak, in words, or undefined when it is strong enough. */
export function tokenWeakness(token: string, minimumBits = minimumTokenBits): string | undefined {
  if (/\s/.test(token)) return "it contains whitespace";
  const counts = new Map<string, number>();
  for (const char of token) counts.set(char, (counts.get(char) ?? 0) + 1);
  const length = [...token].length;
  let perCharacter = 0;
  for (const count of counts.values()) perCharacter -= (count / length) * Math.log2(count / length);
  const bits = Math.floor(perCharacter * length);
  if (bits < minimumBits) return `it carries about ${bits} bits of entropy (${counts.size} distinct characters in ${length}), under ${minimumBits}`;
  return undefined;
}
