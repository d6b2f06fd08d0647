import { Injectable, type ArgumentMetadata, type PipeTransform } from '@nestjs/common';
import { ClientId } from '@baton/protocol';
import type { z } from 'zod';
import { parse } from './body';

/**
 * Validates a request body or query with its zod schema and hands the handler the parsed value;
 * a failure is a 400 naming the field and the rule (body.ts). `absent` stands in for a body the
 * request did not send, where the route makes the body optional.
 */
export class ZodPipe<S extends z.ZodType> implements PipeTransform<unknown, z.infer<S>> {
  constructor(
    private readonly schema: S,
    private readonly absent?: z.input<S>,
  ) {}

  transform(value: unknown): z.infer<S> {
    return parse(this.schema, value ?? this.absent);
  }
}

/** Every path parameter (a task, session, prompt, request or execution id) is a ClientId. */
@Injectable()
export class PathIds implements PipeTransform {
  transform(value: unknown, meta: ArgumentMetadata): unknown {
    return meta.type === 'param' ? parse(ClientId, value, meta.data) : value;
  }
}
