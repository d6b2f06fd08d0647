// Validates Kubernetes objects (a JSON array on stdin) against the API schemas with
// kubernetes-models, which ships as ESM only: run by test/kubernetes.spec.ts as a child process.
// Prints one line of JSON: for each object, null when valid or the validation error's message.
const input = JSON.parse(await new Response(process.stdin).text());
const results = [];
for (const o of input) {
  const [group, version] = o.apiVersion.includes('/')
    ? o.apiVersion.split('/')
    : ['', o.apiVersion];
  const mod = await import(
    group ? `kubernetes-models/${group}/${version}` : `kubernetes-models/${version}`
  );
  const Model = mod[o.kind];
  if (!Model) {
    results.push(`kubernetes-models has no ${o.apiVersion} ${o.kind}`);
    continue;
  }
  try {
    new Model(o).validate();
    results.push(null);
  } catch (err) {
    results.push(String(err instanceof Error ? err.message : err));
  }
}
process.stdout.write(`${JSON.stringify(results)}\n`);
