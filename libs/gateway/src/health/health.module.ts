import { Module } from '@nestjs/common';
import { HealthController } from './health.controller';

/** /healthz, /readyz, /metrics, /openapi.json. */
@Module({ controllers: [HealthController] })
export class HealthModule {}
