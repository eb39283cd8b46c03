// Type-checks TypeScript source that exists only in memory, as if it were a file of the repository (so
// module resolution finds node_modules): how the deploy tests check manifests and the dashboard against
// their published types, where excess-property checks name every unknown field at any depth.
import ts from 'typescript';

/** Which part of the checked source a line came from, so a problem names the manifest or panel. */
export interface SourceOrigin {
  line: number;
  origin: string;
}

/** Every problem the checker finds, as `<origin>: <message> (<the offending line>)`; [] when the source checks. */
export function typeCheckProblems(
  fileName: string,
  source: string,
  origins: readonly SourceOrigin[],
  fallbackOrigin: string,
): string[] {
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const readFile = host.readFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  const getSourceFile = host.getSourceFile.bind(host);
  host.readFile = (path) => (path === fileName ? source : readFile(path));
  host.fileExists = (path) => path === fileName || fileExists(path);
  host.getSourceFile = (path, languageVersion, onError, shouldCreate) =>
    path === fileName
      ? ts.createSourceFile(path, source, languageVersion, true)
      : getSourceFile(path, languageVersion, onError, shouldCreate);
  const program = ts.createProgram([fileName], options, host);
  const sourceFile = program.getSourceFile(fileName);
  const diagnostics = [
    ...program.getSyntacticDiagnostics(sourceFile),
    ...program.getSemanticDiagnostics(sourceFile),
  ];
  return diagnostics.map((diagnostic) => {
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
    if (diagnostic.file === undefined || diagnostic.start === undefined) return message;
    const { line } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
    const origin = [...origins].reverse().find((entry) => entry.line <= line)?.origin ?? fallbackOrigin;
    return `${origin}: ${message} (${diagnostic.file.text.split('\n')[line]?.trim() ?? ''})`;
  });
}
