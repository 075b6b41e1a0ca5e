import type { Era } from '../../test/conformance/eras.mjs';

export const TOOLS_ERA: Era;
/** What determines the tools' binaries (llama-tools-recipe.mjs). */
export interface ToolsRecipe {
  package: string;
  integrity: string;
  release: string;
  vocab: string;
  cc: string;
  cxx: string;
  generator: string;
  cmake: readonly string[];
  targets: readonly string[];
}
export const RECIPE: Readonly<ToolsRecipe>;
/** The cache key of `recipe` built with `compilers` (their `--version` output). */
export function recipeKey(compilers: string, recipe?: ToolsRecipe): string;
