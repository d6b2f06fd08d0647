export {
  startWorker,
  WorkerOptionsError,
  type WorkerHandle,
  type WorkerOptionsInput,
} from './worker';
