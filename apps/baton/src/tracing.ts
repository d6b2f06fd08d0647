// OpenTelemetry starts before anything loads ioredis or http: main imports this module first
// (instrumentations patch modules as they are required). Off unless OTEL_EXPORTER_OTLP_ENDPOINT.
import { startTracing } from '@baton/health';

export const stopTracing = startTracing('baton-baton');
