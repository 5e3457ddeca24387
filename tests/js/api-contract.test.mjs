// One API contract: the hand-written types (bindings/multihead.d.ts) and the JavaScript agree.
// Read with TypeScript's own parser: every value the package exports is declared and every declared
// value is exported; the pretrained model's and a context's public members are the d.ts's; the
// options run(), generate(), logitLens(), attribute() and patch() take are the d.ts's options.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import ts from 'typescript';
import * as api from '../../bindings/multihead.mjs';
import { EncoderDecoderModel, ModelContext, PretrainedModel } from '../../bindings/multihead.mjs';

const parse = (path) => ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
const dts = parse('bindings/multihead.d.ts');
const context = parse('bindings/model-context.mjs');

const isExported = (node) => node.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
const declared = (kind) => dts.statements.filter((s) => s.kind === kind && isExported(s));
const nameOf = (node) => node.name?.getText(dts);

// The d.ts's exported values: functions, classes and constants (not interfaces or types).
function declaredValues() {
  const names = new Set();
  for (const s of declared(ts.SyntaxKind.FunctionDeclaration)) names.add(nameOf(s));
  for (const s of declared(ts.SyntaxKind.ClassDeclaration)) names.add(nameOf(s));
  for (const s of declared(ts.SyntaxKind.VariableStatement)) s.declarationList.declarations.forEach((d) => names.add(d.name.getText(dts)));
  return names;
}

// A declared class's public members (not private, not the constructor), with those of the
// interfaces merged into it (`interface X extends ModelRuns {}`) and what they extend.
function declaredMembers(className) {
  const node = declared(ts.SyntaxKind.ClassDeclaration).find((s) => nameOf(s) === className);
  const names = new Set(node.members
    .filter((m) => m.kind !== ts.SyntaxKind.Constructor && !m.modifiers?.some((x) => x.kind === ts.SyntaxKind.PrivateKeyword))
    .map((m) => m.name.getText(dts)));
  const addInterface = (name) => {
    for (const i of declared(ts.SyntaxKind.InterfaceDeclaration).filter((s) => nameOf(s) === name)) {
      i.members.forEach((m) => names.add(m.name.getText(dts)));
      i.heritageClauses?.forEach((h) => h.types.forEach((t) => addInterface(t.expression.getText(dts))));
    }
  };
  addInterface(className);
  return names;
}

// A JS class's public members: its prototype's names and the fields its constructor sets on this.
function jsMembers(cls, fields = []) {
  const names = Object.getOwnPropertyNames(cls.prototype).filter((n) => n !== 'constructor');
  return new Set([...names, ...fields]);
}

// The names an interface declares.
function interfaceKeys(name) {
  const node = declared(ts.SyntaxKind.InterfaceDeclaration).find((s) => nameOf(s) === name);
  return node.members.map((m) => m.name.getText(dts)).sort();
}

// The names a method of ModelContext destructures from its options: `const { … } = optionsOf(options, …)`.
function optionNames(method) {
  let found = null;
  const names = (pattern) => pattern.elements.map((e) => (e.propertyName ?? e.name).getText(context)).sort();
  const inBody = (node) => {
    if (ts.isVariableDeclaration(node) && ts.isObjectBindingPattern(node.name) && node.initializer
      && ts.isCallExpression(node.initializer) && node.initializer.expression.getText(context) === 'optionsOf') {
      found ??= names(node.name);
    }
    ts.forEachChild(node, inBody);
  };
  const visit = (node) => {
    if (ts.isMethodDeclaration(node) && node.name.getText(context) === method) inBody(node.body);
    ts.forEachChild(node, visit);
  };
  visit(context);
  return found;
}

describe('the types and the JavaScript agree', () => {
  it('every exported value is declared, and every declared value exported', () => {
    expect([...declaredValues()].sort()).toEqual(Object.keys(api).sort());
  });

  it('PretrainedModel and ModelContext have the members their declarations list', () => {
    expect([...jsMembers(PretrainedModel, ['config', 'tokenizer'])].sort())
      .toEqual([...declaredMembers('PretrainedModel')].sort());
    expect([...jsMembers(ModelContext)].sort()).toEqual([...declaredMembers('ModelContext')].sort());
    expect(declaredMembers('PretrainedModel').has('logitLens')).toBe(true);  // through ModelRuns
  });

  it('EncoderDecoderModel has the members its declaration lists', () => {
    expect([...jsMembers(EncoderDecoderModel, ['config', 'tokenizer'])].sort())
      .toEqual([...declaredMembers('EncoderDecoderModel')].sort());
  });

  it('the JSDoc of run()\'s result names the fields PretrainedRun declares', () => {
    const typedef = /@typedef \{\{([\s\S]*?)\}\} RunResult/.exec(readFileSync('bindings/model-context.mjs', 'utf8'))[1];
    // Top-level keys only: drop nested braces' contents first.
    let flat = typedef.replace(/\*/g, ' ');
    while (/\{[^{}]*\}/.test(flat)) flat = flat.replace(/\{[^{}]*\}/g, '');
    const keys = [...flat.matchAll(/(\w+)\??:/g)].map((m) => m[1]).sort();
    expect(keys).toEqual(interfaceKeys('PretrainedRun'));
  });

  it.each([
    ['run', 'PretrainedRunOptions'], ['generate', 'GenerateOptions'], ['logitLens', 'LogitLensOptions'],
    ['attribute', 'AttributeOptions'], ['patch', 'PatchOptions'],
  ])('%s() takes the options %s declares', (method, options) => {
    expect(optionNames(method)).toEqual(interfaceKeys(options));
  });
});
