/**
 * Entry point of the Pepr peer module (`pepr build` bundles it into dist/pepr-<uuid>.js). As in every
 * Pepr module it registers the capabilities with the configuration in package.json. The one change from
 * Pepr's template is `deferStart` with `start(port)`, Pepr's documented way to choose the port: the
 * benchmark picks a free one instead of Pepr's fixed 3000 on a machine other programs share.
 *
 * `pepr build` loads this file with PEPR_MODE=build only to list the capabilities; Pepr then creates no
 * controller, and `start()` would throw, so it is not called then.
 */
import { PeprModule } from "pepr";
import cfg from "./package.json";
import { Annotate } from "./capabilities/annotate";

const module = new PeprModule(cfg, [Annotate], { deferStart: true });
if (process.env.PEPR_MODE !== "build") module.start(Number(process.env.PEPR_BENCH_PORT ?? "3000"));
