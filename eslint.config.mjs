// ESLint (flat config) for the HTML report's JavaScript, dlpt/renderers/html/assets/*.js: plain ES5-style
// scripts (no modules, no build step, no library), each an IIFE that adds to `window.dlpt`, all
// inlined into one <script> of a page whose Content-Security-Policy forbids eval and every fetch.
// Pinned in package.json / package-lock.json; `.ci/run` runs `npm ci && npx eslint`.
import js from "@eslint/js";
import globals from "globals";

export default [
  { ignores: ["node_modules/**", "build/**", ".whl/**", ".out/**"] },
  {
    files: ["dlpt/renderers/html/assets/*.js"],
    ...js.configs.recommended,
    languageOptions: {
      // ES5 syntax: the assets are written for any browser that opens a saved report; a `const`
      // or an arrow function is a parse error here, not a silent change of style.
      ecmaVersion: 5,
      sourceType: "script",
      // Browser globals only: a misspelt or forgotten name is an error, not an implicit global.
      // ES2015 built-ins (typed arrays) are used: every browser that runs the page has them.
      globals: { ...globals.browser, ...globals.es2015 },
    },
    linterOptions: { reportUnusedDisableDirectives: "error" },
    rules: {
      ...js.configs.recommended.rules,
      eqeqeq: ["error", "always"],
      "no-unused-vars": ["error", { args: "after-used", caughtErrors: "all" }],
      "no-redeclare": "error",
      "no-shadow": ["error", { builtinGlobals: false }],
      "no-use-before-define": ["error", { functions: false, classes: true, variables: true }],
      "no-implicit-globals": "error",
      "no-self-compare": "error",
      "no-unmodified-loop-condition": "error",
      "no-unreachable-loop": "error",
      "no-template-curly-in-string": "error",
      "array-callback-return": "error",
      "consistent-return": "error",
      "default-case-last": "error",
      "no-caller": "error",
      "no-new-wrappers": "error",
      "no-throw-literal": "error",
      "no-useless-call": "error",
      radix: "error",
      strict: ["error", "function"],
      // The page's CSP has no 'unsafe-eval': these would fail at run time, in the user's browser.
      "no-eval": "error",
      "no-implied-eval": "error",
      "no-new-func": "error",
      // Session strings (kernel, file, function names) are data: the page builds the DOM with
      // textContent only (CONTRIBUTING.md, "Session data is untrusted").
      "no-restricted-properties": [
        "error",
        { property: "innerHTML", message: "Set textContent (session strings are untrusted)." },
        { property: "outerHTML", message: "Set textContent (session strings are untrusted)." },
        { property: "insertAdjacentHTML", message: "Build nodes with D.el (session strings are untrusted)." },
        { object: "document", property: "write", message: "Build nodes with D.el." },
        { object: "document", property: "writeln", message: "Build nodes with D.el." },
      ],
    },
  },
];
