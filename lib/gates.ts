/**
 * The engine predictors now live in lib/engines/ (one file per engine); this module re-exports them for the files
 * that still import it.
 */
export * from './engines/index.js';
