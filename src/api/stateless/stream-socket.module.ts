import { Module } from '@nestjs/common';
import { InvocationModule } from '../../invocation/invocation.module';
import { StreamSocketGateway } from './stream-socket.gateway';

/** The deprecated WebSocket `/{name}/{version}/stream` route of every v1/v2alpha1 agent (one gateway for all). */
@Module({ imports: [InvocationModule], providers: [StreamSocketGateway] })
export class StreamSocketModule {}
