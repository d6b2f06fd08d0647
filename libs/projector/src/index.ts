export { startProjector, type ProjectorHandle, type ProjectorOptions } from './projector';
export { ProjectorOptionsError, projectorOptions } from './options';
export { PROJECTOR_SETTINGS, type ProjectorConfig } from '@baton/config';
