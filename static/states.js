// states.js: the server's names that the pages' scripts compare with, one
// source for both sides: a binary's state in the symbolization panel, a
// job's state and the event types of its stream, an upload's phases.
// Generated from the Go
// constants by TestStatesJS (web/ondemand/statesjs_test.go), which fails
// when this file is stale: do not edit it, run go generate ./web/ondemand/.

/**
 * A binary's state, in its events and its panel row's data-state
 * (symbolize.State; Pseudo is views.StatePseudo).
 */
export const BinaryState = Object.freeze({
  Queued: 'queued',
  Searching: 'searching',
  Fetching: 'fetching',
  Loading: 'loading',
  Symbolized: 'symbolized',
  NotFound: 'no symbols',
  Skipped: 'skipped',
  Error: 'error',
  Pseudo: 'pseudo',
});

/**
 * A symbolization job's state, in its status and the panel's data-job
 * (ondemand.RunState).
 */
export const RunState = Object.freeze({
  None: 'none',
  Queued: 'queued',
  Running: 'running',
  Done: 'done',
  Interrupted: 'interrupted',
  Abandoned: 'abandoned',
});

/**
 * The event types of a profile's symbolization stream, /p/ID/events
 * (ondemand.Event*).
 */
export const SymbolizeEvent = Object.freeze({
  Job: 'job',
  Binary: 'binary',
  Progress: 'progress',
  Names: 'names',
  Symbolized: 'symbolized',
});

/**
 * The phases of an upload's progress stream, /api/uploads/KEY/progress:
 * the server's own (web's phase*), then the reader's (perfdata.Phase*).
 */
export const UploadPhase = Object.freeze({
  Receiving: 'receiving',
  Converting: 'converting',
  Inflating: 'inflating',
  ReadingRecords: 'reading records',
  AggregatingStacks: 'aggregating stacks',
});
