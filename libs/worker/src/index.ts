export {
  startWorker,
  workerOptions,
  WORKER_SETTINGS,
  type WorkerConfig,
  WorkerOptionsError,
  type WorkerHandle,
  type WorkerOptionsInput,
} from './worker';
