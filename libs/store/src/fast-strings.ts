/**
 * ioredis declares `class VerbatimString extends String`. Declaring a subclass of String turns
 * String.prototype into a dictionary-mode object in V8, and optimized code then finds every string
 * method (charCodeAt, startsWith, indexOf, …) the slow way: 1.5–5× slower on this machine, in every
 * process that loads this module. V8 makes a prototype fast again when an inline cache, once its
 * feedback exists, looks a property up through it on an object receiver: enough lookups on a String
 * wrapper do that, once, before any hot code is compiled.
 */
export function restoreFastStringPrototype(): void {
  const wrapper = Object('') as { charCodeAt: unknown };
  const lookUp = (o: { charCodeAt: unknown }) => o.charCodeAt;
  for (let i = 0; i < 1_000; i++) lookUp(wrapper);
}
