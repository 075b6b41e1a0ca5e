/**
 * One side of `bench --node-llama-cpp` (dist/bench-node-llama-cpp.js, started by node-llama-cpp.ts with the job as
 * JSON on standard input): applies the profile, when there is one, before getLlama() as an app would, then loads
 * the user's node-llama-cpp and measures. Its result is the last line of standard output; node-llama-cpp's log goes to
 * standard error. Any failure is an exit status other than 0 with the reason on standard error: never a result.
 */
import { pathToFileURL } from 'node:url';
import { isUtilityProcess, readChildInput } from '../core/node-child.js';
import { applyPatch } from '../patch/apply.js';
import {
  GREEDY_PROMPT,
  GREEDY_TOKENS,
  resolveNodeLlamaCpp,
  type ChildJob,
  type ChildResult,
  type GreedyStep,
  type Timed,
  WARMUP_GEN_TOKENS,
} from './node-llama-cpp.js';

/** The parts of node-llama-cpp's API used here (3.x). */
interface Sequence {
  evaluateWithoutGeneratingNewTokens(tokens: number[]): Promise<void>;
  evaluate(tokens: number[], options: { temperature: number }): AsyncGenerator<number>;
  evaluateWithMetadata(
    tokens: number[],
    metadata: { probabilities: true },
    options: { temperature: number },
  ): AsyncGenerator<{ token: number; probabilities: Map<number, number> }>;
  clearHistory(): Promise<void>;
}
interface Model {
  tokenize(text: string): number[];
  detokenize(tokens: number[]): string;
  tokens: { bos: number | null };
  createContext(options: { contextSize: number; batchSize: number; threads?: number }): Promise<{
    getSequence(): Sequence;
  }>;
}
interface Llama {
  gpu: string | false;
  llamaCppRelease?: { release?: string };
  loadModel(options: { modelPath: string }): Promise<Model>;
  dispose(): Promise<void>;
}
interface NodeLlamaCpp {
  getLlama(options: Record<string, unknown>): Promise<Llama>;
}

const seconds = (since: bigint) => Number(process.hrtime.bigint() - since) / 1e9;

/** Generates `count` tokens greedily after `start`, one evaluation each; how many it made. */
async function generate(sequence: Sequence, start: number[], count: number): Promise<number> {
  let made = 0;
  for await (const _ of sequence.evaluate(start, { temperature: 0 })) if (++made >= count) break;
  return made;
}

async function main(job: ChildJob): Promise<ChildResult> {
  // Before getLlama(): ggml-metal reads the device once, when node-llama-cpp registers its backend.
  let applied = false;
  let notApplied: string | null = null;
  if (job.profile !== null) {
    const r = applyPatch(job.profile, { force: job.force, allowAboveHardware: job.allowAboveHardware ?? false });
    applied = r.applied;
    if (!r.applied) notApplied = `${r.reason}: ${r.detail}`;
  }
  const found = resolveNodeLlamaCpp(job.cwd);
  const nlc = (await import(pathToFileURL(found.entry).href)) as NodeLlamaCpp;
  const llama = await nlc.getLlama({
    // What is installed is what is measured: never a build from source in the middle of a bench.
    build: 'never',
    progressLogs: false,
    logLevel: 'warn',
    logger: (level: string, message: string) => process.stderr.write(`node-llama-cpp ${level}: ${message}\n`),
    ...(job.threads === null ? {} : { maxThreads: job.threads }),
  });
  const model = await llama.loadModel({ modelPath: job.model });
  const greedyPrompt = model.tokenize(GREEDY_PROMPT);
  const contextSize = Math.max(job.promptTokens, job.genTokens + 1, greedyPrompt.length + GREEDY_TOKENS) + 8;
  const context = await model.createContext({
    contextSize,
    batchSize: Math.min(512, contextSize),
    ...(job.threads === null ? {} : { threads: job.threads }),
  });
  const sequence = context.getSequence();

  // Prompt processing: the text's tokens, repeated to the length asked for, in one evaluation.
  const textTokens = model.tokenize(job.text);
  if (textTokens.length === 0) throw new Error('the prompt text has no tokens');
  const prompt = Array.from({ length: job.promptTokens }, (_, i) => textTokens[i % textTokens.length]!);
  // Generation: one token at a time after the first, as llama-bench's tg test does.
  const start = [model.tokens.bos ?? textTokens[0]!];

  // The warm-up, as llama-bench's: the whole prompt (so the prompt's own pipelines are compiled, whatever shapes they
  // need) and a few tokens generated one at a time. Timed apart: on Metal it is mostly compiling pipelines.
  let t = process.hrtime.bigint();
  await sequence.evaluateWithoutGeneratingNewTokens(prompt);
  await sequence.clearHistory();
  await generate(sequence, start, WARMUP_GEN_TOKENS);
  const warmup = { seconds: seconds(t) };

  const pp: Timed = { tokens: prompt.length, seconds: [] };
  const tg: Timed = { tokens: job.genTokens, seconds: [] };
  for (let rep = 0; rep < job.repetitions; rep++) {
    await sequence.clearHistory();
    t = process.hrtime.bigint();
    await sequence.evaluateWithoutGeneratingNewTokens(prompt);
    pp.seconds.push(seconds(t));
    await sequence.clearHistory();
    t = process.hrtime.bigint();
    const made = await generate(sequence, start, job.genTokens);
    tg.seconds.push(seconds(t));
    if (made !== job.genTokens)
      throw new Error(`generation stopped after ${made} of ${job.genTokens} tokens: the tg test needs them all`);
  }

  // The greedy comparison: the fixed prompt, the most likely token each time, with the runner-up's probability.
  await sequence.clearHistory();
  const greedy: GreedyStep[] = [];
  const piece = (token: number) => model.detokenize([token]);
  for await (const step of sequence.evaluateWithMetadata(greedyPrompt, { probabilities: true }, { temperature: 0 })) {
    const ranked = step.probabilities.entries();
    const first = ranked.next().value as [number, number] | undefined;
    const second = ranked.next().value as [number, number] | undefined;
    greedy.push({
      token: step.token,
      text: piece(step.token),
      probability: step.probabilities.get(step.token) ?? first?.[1] ?? 0,
      runnerUp:
        second === undefined
          ? null
          : first !== undefined && first[0] !== step.token
            ? { token: first[0], text: piece(first[0]), probability: first[1] }
            : { token: second[0], text: piece(second[0]), probability: second[1] },
    });
    if (greedy.length >= GREEDY_TOKENS) break;
  }
  const result: ChildResult = {
    nodeLlamaCpp: found.version,
    llamaCpp: llama.llamaCppRelease?.release ?? null,
    gpu: llama.gpu,
    applied,
    notApplied,
    warmup,
    pp,
    tg,
    greedy,
  };
  await llama.dispose();
  return result;
}

readChildInput()
  .then((input) => main(JSON.parse(input) as ChildJob))
  .then(
    (result) => {
      process.stdout.write(`${JSON.stringify(result)}\n`);
    },
    (err: unknown) => {
      const e = err as { code?: string; message?: string };
      process.stderr.write(`${e.code ? `${e.code}: ` : ''}${e.message ?? String(err)}\n`);
      process.exitCode = e.code === 'ERR_BENCH_NO_NODE_LLAMA_CPP' ? 3 : 1;
    },
  )
  // Its parent port would keep a utility process alive.
  .finally(() => {
    if (isUtilityProcess()) process.stdout.write('', () => process.exit());
  });
