export {
  startWorker,
  workerOptions,
  WorkerOptionsError,
  type WorkerHandle,
  type WorkerOptionsInput,
} from './worker';
export { WORKER_SETTINGS, type WorkerConfig } from '@baton/config';
