import { Global, Module } from '@nestjs/common';
import { OPTIONS, type ResolvedOptions } from '../options';
import { Authenticator } from './auth';
import { TenantRequestRate } from './request-rate';
import { RestAuthGuard } from './rest-auth.guard';

/** Bearer tokens (HS256 JWT) for the WebSocket upgrades and REST. */
@Global()
@Module({
  providers: [
    {
      provide: Authenticator,
      inject: [OPTIONS],
      useFactory: (o: ResolvedOptions) => new Authenticator(o.jwtSecret, o.jwtIssuer),
    },
    {
      provide: TenantRequestRate,
      inject: [OPTIONS],
      useFactory: (o: ResolvedOptions) => new TenantRequestRate(o.maxRequestsPerSecond),
    },
    RestAuthGuard,
  ],
  exports: [Authenticator, RestAuthGuard, TenantRequestRate],
})
export class AuthModule {}
