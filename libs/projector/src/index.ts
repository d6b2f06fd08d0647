export { startProjector, type ProjectorHandle, type ProjectorOptions } from './projector';
export { ProjectorOptionsError } from './options';
