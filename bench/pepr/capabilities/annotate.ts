/**
 * The work the Pepr peer does per admission: one annotation on every Pod created, in any namespace.
 * The smallest mutation Pepr can express, so the benchmark measures Pepr's own cost per request (its
 * request wrapper, filters, patch computation and logs) rather than the work of a module.
 */
import { Capability, a } from "pepr";

export const Annotate = new Capability({
  name: "annotate",
  description: "Adds one annotation to every Pod created",
  namespaces: [],
});

const { When } = Annotate;

When(a.Pod)
  .IsCreated()
  .Mutate(pod => {
    pod.SetAnnotation("bench.drainguard.io/seen-by", "pepr");
  });
