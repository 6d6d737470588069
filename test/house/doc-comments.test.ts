// The TypeDoc plugin behind `npm run docs` (scripts/typedoc-name-first.mjs) flags exported declarations whose doc
// comment does not start with their name, and accepts the forms podnet's comments use: the bare name, `Class.member`,
// `Symbol.dispose` for [Symbol.dispose], a name in backticks, inherited members and the members of object literals.
import { fileURLToPath } from 'node:url';

import { Application, Logger, LogLevel, TSConfigReader } from 'typedoc';
import { describe, expect, it } from 'vitest';

const FIXTURES = fileURLToPath(new URL('../fixtures/typedoc/', import.meta.url));
const PLUGIN = fileURLToPath(new URL('../../scripts/typedoc-name-first.mjs', import.meta.url));

class CollectingLogger extends Logger {
  readonly warnings: string[] = [];
  readonly errors: string[] = [];

  override log(message: string, level: LogLevel): void {
    super.log(message, level);
    if (level === LogLevel.Warn) this.warnings.push(message);
    if (level === LogLevel.Error) this.errors.push(message);
  }
}

/** nameWarnings runs TypeDoc with the plugin on one fixture file and returns what the plugin warned about. */
async function nameWarnings(file: string): Promise<string[]> {
  const app = await Application.bootstrapWithPlugins({
    entryPoints: [FIXTURES + file],
    tsconfig: FIXTURES + 'tsconfig.json',
    plugin: [PLUGIN],
    readme: 'none',
    logLevel: 'Warn',
    disableSources: true,
    validation: { notExported: false, invalidLink: false, notDocumented: false },
    // Only the fixture's tsconfig: the project's typedoc.json would replace the entry points.
  }, [new TSConfigReader()]);
  const logger = new CollectingLogger();
  app.logger = logger;
  const project = await app.convert();
  expect(logger.errors, "TypeDoc's errors on the fixture").toEqual([]);
  expect(project, 'TypeDoc converts the fixture').toBeDefined();
  app.validate(project!);
  return logger.warnings.filter((w) => w.includes('does not start with its name'));
}

describe('typedoc name-first plugin', () => {
  it('accepts comments that start with the name, Class.member, Symbol.dispose or `name`', async () => {
    expect(await nameWarnings('named.ts')).toEqual([]);
  });

  it('flags every export and member whose comment starts otherwise', async () => {
    const flagged = (await nameWarnings('unnamed.ts')).map((w) => w.slice(0, w.indexOf(':')));
    expect(flagged.sort()).toEqual(['WIDGET_LIMIT', 'Widget', 'WidgetBox.[dispose]', 'WidgetBox.put', 'widget']);
  });
});
