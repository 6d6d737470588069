// TypeDoc plugin: every documented export (and every member of an exported
// class or interface that is a method or accessor) has a doc comment that
// starts with its own name, so the reference reads "Ipset.open opens ..."
// and a search of the source for a name lands on its comment. TypeDoc's own
// notDocumented validation finds the missing comments; this finds the ones
// that describe something without saying what. A finding is a warning, which
// typedoc.json turns into a failure of `npm run docs`.
import { Application, Comment, ReflectionKind } from 'typedoc';

const CHECKED =
  ReflectionKind.Class |
  ReflectionKind.Interface |
  ReflectionKind.Function |
  ReflectionKind.Variable |
  ReflectionKind.TypeAlias |
  ReflectionKind.Enum |
  ReflectionKind.Method |
  ReflectionKind.Accessor;

// What may follow the name: "Netns.open opens", "SAFE_PATH: the ...", "close()", "Netns's ...".
const AFTER_NAME = /^[\s,.:;('<]/;

function commentOf(reflection) {
  const signature = reflection.signatures?.[0] ?? reflection.getSignature;
  return signature?.comment ?? reflection.comment;
}

// The names a comment may start with: the export's own, `Parent.name` for members, and `Symbol.dispose` for
// `[Symbol.dispose]`, which TypeDoc calls "[dispose]".
function namesOf(reflection) {
  const own = reflection.name.replace(/^\[(\w+)\]$/, 'Symbol.$1');
  const names = [own];
  if (reflection.kindOf(ReflectionKind.Method | ReflectionKind.Accessor) && reflection.parent) {
    names.push(`${reflection.parent.name}.${own}`);
  }
  return names;
}

function startsWithName(text, names) {
  const plain = text.replace(/`/g, '').trimStart();
  return names.some((name) => plain.startsWith(name) && (plain.length === name.length || AFTER_NAME.test(plain.slice(name.length))));
}

/** load registers the check with the application that loads this plugin. */
export function load(app) {
  app.on(Application.EVENT_VALIDATE_PROJECT, (project) => {
    for (const reflection of project.getReflectionsByKind(CHECKED)) {
      // Inherited members keep the comment of the class they come from, which names that class's member.
      if (reflection.inheritedFrom || reflection.flags.isExternal) continue;
      // Members of an object literal's type (a frozen table of helpers) read like properties: no name needed.
      if (reflection.parent?.kindOf(ReflectionKind.TypeLiteral)) continue;
      const comment = commentOf(reflection);
      if (!comment) continue;
      const text = Comment.combineDisplayParts(comment.summary);
      if (!startsWithName(text, namesOf(reflection))) {
        app.logger.warn(
          `${reflection.getFriendlyFullName()}: its doc comment does not start with its name ` +
            `(${namesOf(reflection).join(' or ')}): "${text.slice(0, 60)}"`,
        );
      }
    }
  });
}
