export { startProjector, type ProjectorHandle, type ProjectorOptions } from './projector';
export { ProjectorOptionsError } from './options';
export { PROJECTOR_SETTINGS, projectorOptions, type ProjectorConfig } from './options';
