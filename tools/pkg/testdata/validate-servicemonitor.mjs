// Validates every ServiceMonitor in the YAML files named on the command
// line against prometheus-operator's CRD schema, as the npm package
// @kubernetes-models/prometheus-operator carries it; exits 1 at the
// first error. Run by tools/pkg's TestKubernetesManifest.
import fs from "node:fs";
import yaml from "js-yaml";
import { ServiceMonitor } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1";
let n = 0;
for (const file of process.argv.slice(2)) {
  for (const doc of yaml.loadAll(fs.readFileSync(file, "utf8"))) {
    if (!doc || doc.kind !== "ServiceMonitor") continue;
    try {
      new ServiceMonitor(doc).validate();
    } catch (e) {
      console.error(`${file}: ServiceMonitor ${doc.metadata?.name}: ${e.message}`);
      process.exit(1);
    }
    n++;
  }
}
console.log(`${n} ServiceMonitor valid`);
