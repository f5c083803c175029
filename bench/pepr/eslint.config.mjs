// `pepr build` lints the module before bundling; this is the smallest configuration that lets it parse
// TypeScript (Pepr's template adds rule sets the benchmark does not need).
import tsParser from "@typescript-eslint/parser";

export default [{ ignores: ["**/node_modules", "**/dist"] }, { files: ["**/*.ts"], languageOptions: { parser: tsParser } }];
